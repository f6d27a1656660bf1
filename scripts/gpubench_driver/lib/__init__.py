"""The driver's library: what every layer above uses and what knows no study by name. A module here imports
only other modules here."""
