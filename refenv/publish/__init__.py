"""`invoke publish`: push the environments a matrix run verified, with their evidence in labels and a manifest."""
