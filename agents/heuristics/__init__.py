"""dcgym."""
