"""One adapter per cloud provider: create, list and delete a tagged worker instance."""
