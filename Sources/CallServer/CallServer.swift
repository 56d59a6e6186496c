// CallServer: see docs/call.md.
