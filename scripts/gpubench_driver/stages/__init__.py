"""The stages of a run, each a module with one job: plan (options) -> run (build, runner, trials,
journal, references, the session) -> collect (results files, a node's GPUs) -> analyse (findings
across the studies, headline, health, claims) -> render (summary, plots). A stage asks every study
plug-in (studies/) what it contributes and names none; it imports lib/, studies/ and the stages it
builds on, never a command."""
