"""The image backend's Python: `broken_image`, which writes broken copies of a linked driver
image for the self-tests (reading the image with the runner's `ppm-image-runner describe`, the
one PE reader, tools/image/runner), beside the tests of that runner in tests/. Dev-only, never
in a shipped binary (docs/image-backend.md, docs/driver-image.md)."""
