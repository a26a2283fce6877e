"""The build: base image, wheelhouse and locks, environment images, the simulated driver."""
