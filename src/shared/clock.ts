/** Domain code takes the time from here, so tests can inject a clock. */
export type Clock = () => Date;
export const systemClock: Clock = () => new Date();
