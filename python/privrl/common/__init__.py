"""What every folder of privrl shares: the exception family and the one vocabulary of input checks."""
