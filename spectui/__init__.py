"""spectui: explore speculative decoding in the terminal."""
