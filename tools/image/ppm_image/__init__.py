"""The image backend's Python: the linked driver image's checker (`check_image`, `stack`,
`pe_image`) and the runner of `ppm-sim --pep image` (`runner` and the modules it imports).
Dev-only, never in a shipped binary (docs/image-backend.md, docs/driver-image.md)."""
