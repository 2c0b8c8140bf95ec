"""`python -m app.validation`."""

from app.validation.report import main

main()
