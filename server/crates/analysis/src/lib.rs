//! The driver: source text → kernel reports; and the renderers of those reports.
