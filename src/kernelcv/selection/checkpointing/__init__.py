"""Resuming a search: the JSON Lines checkpoint of finished kernel settings and
confirmations (``checkpoint``) and the checks a resumed record must pass
(``record_checks``: checksums, value ranges, the BIF flags).

The package imports nothing at load time: import its modules.
"""
