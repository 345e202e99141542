"""The faces ring: gateway, cli, channels, web; and the composition root."""
