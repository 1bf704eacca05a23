"""When a usage limit ends, from the time an agent CLI's message names (`resets 2:49am (UTC)`,
`try again at Nov 25th, 2026 5:34 AM`): each adapter's errors module finds the time in its own
wording; turning it into a moment is the same for all of them."""

from __future__ import annotations

import re
import time as _time
from datetime import datetime, timedelta, timezone, tzinfo

MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
# The texts show whole minutes, cut off: "2:49am" may mean 2:49:59, a little before `now`.
RESET_GRACE_SECONDS = 120


def next_reset(found: re.Match[str], now: datetime, zone: tzinfo | None) -> float | None:
    """Unix seconds of the moment `found` names (its groups `hour`, `minute` (optional),
    `half` (a or p), and `month`, `day`, `year` when it gives a date), in `zone`, else this
    machine's local time. A time without a date is the next such time after `now` (naive:
    UTC), a date without a year the next such date; None when it is no real time or date."""
    hour, minute = int(found["hour"]), int(found["minute"] or 0)
    if not 1 <= hour <= 12 or minute > 59:
        return None
    hour = hour % 12 + (12 if found["half"].lower() == "p" else 0)
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    earliest = now.timestamp() - RESET_GRACE_SECONDS
    if zone is None:
        today = _time.localtime(now.timestamp())
        year, month, day = today.tm_year, today.tm_mon, today.tm_mday
    else:
        here = now.astimezone(zone)
        year, month, day = here.year, here.month, here.day
    if found["month"]:
        month, day = MONTHS.index(found["month"][:3].lower()) + 1, int(found["day"])
        try:
            datetime(int(found["year"] or 2024), month, day)  # 2024: a leap year allows Feb 29
        except ValueError:
            return None
        if found["year"]:
            return _stamp(int(found["year"]), month, day, hour, minute, zone)
        candidates = [(year, month, day), (year + 1, month, day)]
    else:
        candidates = [(year, month, day), (year, month, day + 1)]
    for y, m, d in candidates:
        stamp = _stamp(y, m, d, hour, minute, zone)
        if stamp >= earliest:
            return stamp
    return None


def _stamp(year: int, month: int, day: int, hour: int, minute: int, zone: tzinfo | None) -> float:
    if zone is None:
        # mktime reads the system zone (DST included) and rolls day overflow into the month.
        return _time.mktime((year, month, day, hour, minute, 0, 0, 0, -1))
    moment = datetime(year, month, 1, hour, minute, tzinfo=zone) + timedelta(days=day - 1)
    return moment.timestamp()
