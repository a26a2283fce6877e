"""What refenv ships to where reports are written: the single-file diagnoser and the paste page."""
