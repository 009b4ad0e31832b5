"""A small CUDA extension that synchronizes inside C++, where no Python hook can see it."""
