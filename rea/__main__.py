"""``python -m rea``: the same entry point as the ``rea`` console script."""

from rea.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
