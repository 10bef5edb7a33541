"""The battery's spec modules, one per library module (see tests/test_battery.py)."""
