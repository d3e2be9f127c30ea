"""Test package. Puts tests/plugins on sys.path so its dist-info registers the
test-only tagger through a real entry point, exactly as a third party would."""
import sys
from pathlib import Path

PLUGINS = str(Path(__file__).parent / "plugins")
if PLUGINS not in sys.path:
    sys.path.insert(0, PLUGINS)
