"""ttflashdecode: FlashDecode attention for Tenstorrent Wormhole, callable like a TT-NN op."""

__version__ = "0.1.0"
