/**
 * Values kept by where they are on the device: (device, address), one map of
 * addresses per device. Exact for every address a number holds exactly (up
 * to 2^53 - 1, see consistency.ts): a key made by arithmetic, such as
 * `address * 32 + device`, is exact only while the product is, and past 2^48
 * two blocks on two devices took one key and one of them was dropped.
 */
export class AddressMap<T> {
  /** The value at `address` on `device`, if any. */
  get(device: number, address: number): T | undefined {
    return this._byDevice.get(device)?.get(address);
  }

  /** Keep `value` at `address` on `device`, in place of any value there. */
  set(device: number, address: number, value: T): void {
    let addresses = this._byDevice.get(device);
    if (addresses === undefined) {
      addresses = new Map();
      this._byDevice.set(device, addresses);
    }
    addresses.set(address, value);
  }

  /** Drop the value at `address` on `device`; true when there was one. */
  delete(device: number, address: number): boolean {
    return this._byDevice.get(device)?.delete(address) ?? false;
  }

  /** Every value, device by device, each device's in the order they were first set. */
  *values(): IterableIterator<T> {
    for (const addresses of this._byDevice.values()) {
      yield* addresses.values();
    }
  }

  private readonly _byDevice = new Map<number, Map<number, T>>();
}
