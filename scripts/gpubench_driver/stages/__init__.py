"""The stages of a run, one job a module: plan (options) -> run -> collect -> analyse -> render
(docs/design.md). A stage asks every study plug-in what it contributes and names none; it imports lib/,
studies/ and the stages it builds on, never a command."""
