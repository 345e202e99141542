"""The ground ring: errors, paths, durable writes, settings, i18n lookup, the db."""
