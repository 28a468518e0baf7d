/** Byte counts for people: binary units, as PyTorch's own messages use. */

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** `1288490188` -> `1.20 GiB`; `signed` adds `+` to positive values. */
export function formatBytes(bytes: number, signed = false): string {
  const sign = bytes < 0 ? '-' : signed && bytes > 0 ? '+' : '';
  let value = Math.abs(bytes);
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  const digits = unit === 0 ? 0 : value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${sign}${value.toFixed(digits)} ${UNITS[unit]}`;
}

/** `3681` -> `3,681`: a count for people, grouped as the CLI's and the panel's other counts are, whatever the locale. */
export function formatCount(count: number): string {
  return count.toLocaleString('en-US');
}
