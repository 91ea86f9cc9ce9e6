"""Retrofitting static vectors to synonym lexicons."""
