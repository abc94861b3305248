#!/usr/bin/env python3
"""The old script, kept working: `limelight-publish` (from `pip install ./clients/python`)
is the same program. Run from a checkout, it uses the package under `src/`."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "src"))

from limelight.publish import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
