"""The five spiral signals, one module each (contract: shared/spec/spiral.md)."""
