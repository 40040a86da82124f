"""Development and test tools shipped with the package (the token bench uses them at run time).

Nothing here runs in a user's turn: `scripted_openai` is a scripted OpenAI-compatible server on
loopback that tests and `zocrates-nb bench tokens --agent` configure as a model endpoint.
"""
