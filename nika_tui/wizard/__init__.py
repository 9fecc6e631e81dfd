"""The onboarding wizard (questionary) and its pure answers → config step."""
