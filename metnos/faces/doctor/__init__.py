"""`metnos doctor` (issue 26): one look at an instance, each problem named with its fix.

Every check is a plain function of the settings and the person's language returning
`Finding`s; `diagnose` runs them all at once, each bounded in time, whether `metnos serve`
runs or not (what cannot be checked while something is down is said, with why).
"""

from metnos.faces.doctor.finding import Finding
from metnos.faces.doctor.report import diagnose

__all__ = ["Finding", "diagnose"]
