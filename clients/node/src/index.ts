export * from './errors';
export * from './paths';
export { parseLibrary, prefixOfName, parseContract, rolesIn, protocolAtLeast, LibraryInfo, Contract, ContractLimits } from './library';
export * from './client';
export * from './limits';
export { LeaseKeeper, Lease, LostReason } from './keeper';
