"""Arena's registry-free image builder (see `builder` for the order and tagging scheme); `publish`
pushes the env images to a registry, `standalone` writes a context that needs none of ours."""

from arena.images.builder import BuildResult, build_images, image_ref, resolve_order
from arena.images.context import default_ca_bundle
from arena.images.specs import NETWORK_TAG, env_images, image_names

__all__ = [
    "NETWORK_TAG",
    "BuildResult",
    "build_images",
    "default_ca_bundle",
    "env_images",
    "image_names",
    "image_ref",
    "resolve_order",
]
