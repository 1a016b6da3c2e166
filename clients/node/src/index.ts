export * from './errors';
export * from './paths';
export { parseLibrary, prefixOfName, LibraryInfo } from './library';
export * from './client';
export { LeaseKeeper, Lease, LostReason } from './keeper';
