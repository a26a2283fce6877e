"""The model: the matrix and its parts, host profiles, statuses, the records of a run and its document."""
