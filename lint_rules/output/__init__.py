"""What the user reads: findings in each report format, and the rules' documentation."""
