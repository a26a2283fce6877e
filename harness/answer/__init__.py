"""Answers where reports are written: the comment an issue gets, and the bot that posts it on GitHub."""
