"""The simulated vehicle fleet, the ping record and its two wire formats.

A :class:`Fleet` is a deterministic model of vehicles driving over the central US: the same
seed gives the same VINs and the same sequence of positions, speeds, headings and OBD codes,
whatever the timing. Only a ping's ``time`` comes from a clock. Both simulators (alpha: CSV
files, beta: HTTP) draw their records from a fleet; :class:`Pacer` and :class:`Timestamps`
turn a rate into batches per tick so generation keeps up with tens of thousands of pings a
second.

Wire formats of a :class:`Ping`:

- CSV (alpha), no header, 8 columns:
  ``sequence,vin,time,latitude,longitude,speed,heading,obd_codes`` (codes ``;``-joined);
- JSON (beta): an object with the same field names, ``obd_codes`` a list.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from streamops.exceptions import SimulatorError

VIN_ALPHABET = "0123456789ABCDEFGHJKLMNPRSTUVWXYZ"
"""Characters a VIN may hold: digits and A-Z without I, O and Q."""
VIN_LENGTH = 17

LAT_MIN, LAT_MAX = 35.0, 45.0
LON_MIN, LON_MAX = -105.0, -90.0
MAX_SPEED_MPH = 90.0
MILES_PER_DEGREE_LAT = 69.0

OBD_CODES = (
    "P0300",
    "P0301",
    "P0171",
    "P0420",
    "P0442",
    "P0128",
    "P0455",
    "P0113",
    "P0505",
    "C0035",
)
CSV_COLUMNS = ("sequence", "vin", "time", "latitude", "longitude", "speed", "heading", "obd_codes")


def check_param(ok: bool, name: str, value: object, expectation: str) -> None:
    """Raise :class:`SimulatorError` naming parameter ``name`` unless ``ok``."""
    if not ok:
        raise SimulatorError(f"invalid simulator parameter {name}={value!r}: {expectation}")


def check_emission_params(rate: float, malformed_every: int, max_pings: int | None) -> None:
    """Validate the parameters both simulators share (rate, malformed_every, max_pings)."""
    rate_ok = isinstance(rate, int | float) and math.isfinite(rate) and rate > 0
    check_param(rate_ok, "rate", rate, "must be a number > 0 (pings per second)")
    every_ok = isinstance(malformed_every, int) and malformed_every >= 0
    check_param(every_ok, "malformed_every", malformed_every, "must be an integer >= 0")
    max_ok = max_pings is None or (isinstance(max_pings, int) and max_pings >= 0)
    check_param(max_ok, "max_pings", max_pings, "must be None or an integer >= 0")


def is_valid_vin(vin: object) -> bool:
    """Whether ``vin`` is 17 characters from :data:`VIN_ALPHABET`."""
    return isinstance(vin, str) and len(vin) == VIN_LENGTH and all(c in VIN_ALPHABET for c in vin)


@dataclass(frozen=True, slots=True)
class Ping:
    """One GPS ping of one vehicle, as both simulators emit it.

    ``sequence`` is per source (1, 2, 3, ...). ``time`` is epoch seconds with millisecond
    precision, positions have 6 decimals, speed (mph) and heading (degrees) 1 decimal.
    """

    sequence: int
    vin: str
    time: float
    latitude: float
    longitude: float
    speed: float
    heading: float
    obd_codes: tuple[str, ...] = ()

    def to_csv(self) -> str:
        """The alpha CSV line of this ping, without the newline."""
        return (
            f"{self.sequence},{self.vin},{self.time:.3f},{self.latitude:.6f},"
            f"{self.longitude:.6f},{self.speed:.1f},{self.heading:.1f},{';'.join(self.obd_codes)}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The beta JSON object of this ping (``obd_codes`` as a list)."""
        return {
            "sequence": self.sequence,
            "vin": self.vin,
            "time": self.time,
            "latitude": self.latitude,
            "longitude": self.longitude,
            "speed": self.speed,
            "heading": self.heading,
            "obd_codes": list(self.obd_codes),
        }

    def to_json(self) -> str:
        """The compact JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_csv(cls, line: str) -> Ping:
        """Parse and validate an alpha CSV line; ``ValueError`` if it is malformed."""
        cols = line.rstrip("\r\n").split(",")
        if len(cols) != len(CSV_COLUMNS):
            raise ValueError(f"expected {len(CSV_COLUMNS)} columns, got {len(cols)}")
        codes = tuple(c for c in cols[7].split(";") if c)
        return cls(
            int(cols[0]),
            cols[1],
            float(cols[2]),
            float(cols[3]),
            float(cols[4]),
            float(cols[5]),
            float(cols[6]),
            codes,
        ).validated()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Ping:
        """Build and validate a ping from a beta JSON object; ``ValueError`` if malformed."""
        try:
            codes = data["obd_codes"]
            if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
                raise ValueError("obd_codes must be a list of strings")
            numbers = [data[k] for k in ("time", "latitude", "longitude", "speed", "heading")]
            if not all(isinstance(n, int | float) and not isinstance(n, bool) for n in numbers):
                raise ValueError("time, latitude, longitude, speed, heading must be numbers")
            seq = data["sequence"]
            if not isinstance(seq, int) or isinstance(seq, bool):
                raise ValueError("sequence must be an integer")
            return cls(seq, data["vin"], *map(float, numbers), tuple(codes)).validated()
        except KeyError as exc:
            raise ValueError(f"missing field {exc.args[0]}") from None

    def validated(self) -> Ping:
        """Return ``self`` if every field is in range, else raise ``ValueError``."""
        if self.sequence < 1:
            raise ValueError(f"sequence {self.sequence} < 1")
        if not is_valid_vin(self.vin):
            raise ValueError(f"invalid vin {self.vin!r}")
        if not math.isfinite(self.time) or self.time < 0:
            raise ValueError(f"invalid time {self.time!r}")
        if not (-90.0 <= self.latitude <= 90.0 and -180.0 <= self.longitude <= 180.0):
            raise ValueError(f"position out of range: {self.latitude}, {self.longitude}")
        if not 0.0 <= self.speed <= MAX_SPEED_MPH:
            raise ValueError(f"speed {self.speed} out of 0..{MAX_SPEED_MPH}")
        if not 0.0 <= self.heading < 360.0:
            raise ValueError(f"heading {self.heading} out of 0..<360")
        return self


def malformed_kind(sequence: int, every: int, kinds: Sequence[str]) -> str | None:
    """Which malformation (if any) record ``sequence`` gets: every ``every``-th record is
    malformed, rotating through ``kinds``; deterministic in the sequence alone."""
    if every <= 0 or sequence % every:
        return None
    return kinds[(sequence // every - 1) % len(kinds)]


class Fleet:
    """A deterministic fleet of ``vehicles`` vehicles whose VINs start with ``vin_prefix``.

    :meth:`next_ping` reports the next vehicle in round-robin order, after moving it by
    ``report_interval`` simulated seconds at its speed and heading (heading and speed do a
    random walk; vehicles bounce off the edges of the lat 35..45, lon -105..-90 box).
    """

    def __init__(
        self, seed: int, vehicles: int, vin_prefix: str = "1F", *, report_interval: float = 5.0
    ) -> None:
        check_param(
            isinstance(vehicles, int) and vehicles >= 1,
            "vehicles",
            vehicles,
            "must be an integer >= 1",
        )
        check_param(
            isinstance(vin_prefix, str) and all(c in VIN_ALPHABET for c in vin_prefix),
            "vin_prefix",
            vin_prefix,
            "must use only digits and A-Z without I, O, Q",
        )
        free = VIN_LENGTH - len(vin_prefix)
        check_param(
            free >= 4 and len(VIN_ALPHABET) ** free >= 4 * vehicles,
            "vin_prefix",
            vin_prefix,
            f"too long to give {vehicles} distinct 17-character VINs",
        )
        check_param(report_interval > 0, "report_interval", report_interval, "must be > 0")
        self._rng = random.Random(seed)
        self._interval_hours = report_interval / 3600.0
        self.vins: tuple[str, ...] = self._make_vins(vin_prefix, free, vehicles)
        rng = self._rng
        self._lat = [rng.uniform(LAT_MIN + 0.5, LAT_MAX - 0.5) for _ in self.vins]
        self._lon = [rng.uniform(LON_MIN + 0.5, LON_MAX - 0.5) for _ in self.vins]
        self._speed = [rng.uniform(20.0, 70.0) for _ in self.vins]
        self._heading = [rng.uniform(0.0, 360.0) for _ in self.vins]
        self._codes: list[tuple[str, ...]] = [() for _ in self.vins]
        self._next = 0

    def _make_vins(self, prefix: str, free: int, count: int) -> tuple[str, ...]:
        seen: set[str] = set()
        vins: list[str] = []
        while len(vins) < count:
            vin = prefix + "".join(self._rng.choice(VIN_ALPHABET) for _ in range(free))
            if vin not in seen:
                seen.add(vin)
                vins.append(vin)
        return tuple(vins)

    def next_ping(self, sequence: int, at: float) -> Ping:
        """Move the next vehicle and return its ping with the given sequence and time."""
        i = self._next
        self._next = (i + 1) % len(self.vins)
        rng = self._rng
        heading = (self._heading[i] + rng.gauss(0.0, 8.0)) % 360.0
        speed = min(MAX_SPEED_MPH, max(0.0, self._speed[i] + rng.gauss(0.0, 3.0)))
        miles = speed * self._interval_hours
        rad = math.radians(heading)
        lat = self._lat[i] + miles * math.cos(rad) / MILES_PER_DEGREE_LAT
        lon = self._lon[i] + miles * math.sin(rad) / (
            MILES_PER_DEGREE_LAT * math.cos(math.radians(lat))
        )
        if not LAT_MIN <= lat <= LAT_MAX:  # bounce north/south: mirror the heading
            lat = 2 * LAT_MIN - lat if lat < LAT_MIN else 2 * LAT_MAX - lat
            heading = (180.0 - heading) % 360.0
        if not LON_MIN <= lon <= LON_MAX:  # bounce east/west
            lon = 2 * LON_MIN - lon if lon < LON_MIN else 2 * LON_MAX - lon
            heading = (360.0 - heading) % 360.0
        self._lat[i], self._lon[i], self._speed[i], self._heading[i] = lat, lon, speed, heading
        self._codes[i] = codes = self._next_codes(self._codes[i])
        return Ping(
            sequence,
            self.vins[i],
            round(at, 3),
            round(lat, 6),
            round(lon, 6),
            round(speed, 1),
            round(heading, 1) % 360.0,
            codes,
        )

    def _next_codes(self, codes: tuple[str, ...]) -> tuple[str, ...]:
        """OBD codes persist for a while: rarely raised (1 or 2), cleared after a few pings."""
        roll = self._rng.random()
        if codes:
            return () if roll < 0.05 else codes
        if roll < 0.002:
            return (self._rng.choice(OBD_CODES),)
        if roll < 0.0025:
            return tuple(sorted(self._rng.sample(OBD_CODES, 2)))
        return ()


class Pacer:
    """Turns a rate into a number of records due at each tick, up to ``max_pings``.

    Uses a monotonic clock (never the ping clock). A backlog larger than one second of
    records (the process was paused) is forgiven rather than emitted in one burst.
    """

    def __init__(
        self,
        rate: float,
        max_pings: int | None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rate = rate
        self.max_pings = max_pings
        self._monotonic = monotonic
        self._start: float | None = None
        self._granted = 0

    @property
    def exhausted(self) -> bool:
        """Whether ``max_pings`` records have been granted."""
        return self.max_pings is not None and self._granted >= self.max_pings

    def forgive(self) -> None:
        """Owe nothing for the time until the next :meth:`due` (emission was held)."""
        if self._start is not None:
            self._start = self._monotonic() - self._granted / self.rate

    def due(self) -> int:
        """How many records to emit now; the caller must emit exactly that many."""
        now = self._monotonic()
        if self._start is None:
            self._start = now
        owed = int((now - self._start) * self.rate) - self._granted
        limit = max(1, math.ceil(self.rate))
        if owed > limit:
            self._start = now - (self._granted + limit) / self.rate
            owed = limit
        if self.max_pings is not None:
            owed = min(owed, self.max_pings - self._granted)
        owed = max(0, owed)
        self._granted += owed
        return owed


class Timestamps:
    """Stamps batches of pings: the first batch at the clock's time, each later batch spread
    evenly over the time since the previous one.

    Times come from ``clock`` (epoch seconds), have millisecond precision and never go
    backwards within one source.
    """

    def __init__(self, clock: Callable[[], float], rate: float) -> None:
        self._clock = clock
        self._rate = rate
        self._last: float | None = None

    def take(self, n: int) -> list[float]:
        """The times of the next ``n`` pings."""
        if n <= 0:
            return []
        now = float(self._clock())
        if self._last is None:  # the first batch: all at the clock's time
            low = high = now
        else:
            high = max(now, self._last)
            low = max(self._last, high - n / self._rate)
        step = (high - low) / n
        times = [round(low + step * (k + 1), 3) for k in range(n)]
        self._last = times[-1]
        return times
