// CallProtocol: see docs/call.md.
