"""The driver's library: what every layer above uses and what knows no study by name (statistics,
the noise model and verdicts, the results schema, documents and their rendering, findings, sections
and chart helpers). A module here imports only other modules here."""
