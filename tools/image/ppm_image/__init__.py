"""The image backend's Python: the one reader of a linked driver image (`image`, with `seh` and
`arm64_unwind` for its unwind data), the image's checker (`check_image`, `stack`) and the
runner of `ppm-sim --pep image` (`runner` and the modules it imports). Dev-only, never in a
shipped binary (docs/image-backend.md, docs/driver-image.md)."""
