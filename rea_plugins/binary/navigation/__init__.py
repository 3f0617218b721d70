"""The navigation room: reading the program where it lies. The provider's inventory and function facts one tool per
operation, instruction listings, the session cursor and its steps, an address's context, the load image and its
bytes, and the binary's layout."""
