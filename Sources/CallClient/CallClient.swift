// CallClient: see docs/call.md.
