"""The diagnosis library: this machine's facts judged (`live`), a pasted report judged (`report`), and the
diagnosis as text (`text`). The `diagnose` and `cell` commands, the issue bot and the paste page call it.
"""
