"""Local server images, made without a registry (``python -m pytest_llmbench image build``): a llama.cpp
build folder, optionally with server flags baked in, as an image the docker launcher runs like a nightly."""

from pytest_llmbench.images.build import BuiltImage, ImageBuildError, Recipe, build_image, installed_bin_dir

__all__ = ["BuiltImage", "ImageBuildError", "Recipe", "build_image", "installed_bin_dir"]
