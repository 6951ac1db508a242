"""OpenTelemetry export (the optional `otel` extra): a trace per ended run, sent over OTLP/HTTP.

spans.py maps a run record to trace data (pure); otlp.py sends it with the
OpenTelemetry exporter (the I/O); export.py decides when, exactly once or retried.
"""
