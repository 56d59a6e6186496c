// CallTransport: see docs/call.md.
