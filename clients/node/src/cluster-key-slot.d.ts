// Types of cluster-key-slot (the slot function ioredis itself uses), which ships none.
declare module 'cluster-key-slot' {
  function calculateSlot(key: string | Buffer): number;
  export = calculateSlot;
}
