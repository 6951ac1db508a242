"""`serve`: a small read-only local web page of the fleet (rows as `status` shows them) and each run's report.

rows.py builds the rows from what each run's record says (no pass, no side effects),
page.py draws them (everything escaped), server.py answers HTTP (binding, token, paths).
"""
