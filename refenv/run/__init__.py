"""The run: expectations, plans, one executor for cells and measurements, judging, the run record, progress."""
