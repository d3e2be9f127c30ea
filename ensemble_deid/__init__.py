"""ensemble-deid: de-identify clinical notes with ensembles of taggers."""
__version__ = "0.1.0"
