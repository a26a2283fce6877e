"""`refenv check`: a matrix row predicted from a Dockerfile (or an image's inspect), before anything is built."""
