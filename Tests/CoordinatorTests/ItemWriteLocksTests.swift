import Testing

@testable import Coordinator

/// Writes serialised per item (``ItemWriteLocks``): who holds a key, who
/// waits, and in which order waiters are granted.
@Suite struct ItemWriteLocksTests {
    typealias Locks = ItemWriteLocks<String>

    @Test func aFreeKeyIsGrantedAndAHeldOneMakesTheNextWriteWait() {
        var locks = Locks()
        #expect(locks.acquire(["a"], owner: "w1", waiter: "w1"))
        #expect(!locks.acquire(["a", "b"], owner: "w2", waiter: "w2"))
        #expect(locks.holders == ["a": "w1"])
        // Another item's write does not wait.
        #expect(locks.acquire(["c"], owner: "w3", waiter: "w3"))
        #expect(locks.release("w1") == ["w2"])
        #expect(locks.holders == ["a": "w2", "b": "w2", "c": "w3"])
        #expect(locks.release("w2") == [])
        #expect(locks.release("w3") == [])
        #expect(locks.isEmpty)
    }

    @Test func waitersOfOneKeyAreGrantedInArrivalOrderAndNoneIsPassed() {
        var locks = Locks()
        #expect(locks.acquire(["a"], owner: "w1", waiter: "w1"))
        #expect(!locks.acquire(["a", "b"], owner: "w2", waiter: "w2"))
        // "b" is free, but w2 came first and wants it: w3 waits behind it.
        #expect(!locks.acquire(["b"], owner: "w3", waiter: "w3"))
        #expect(!locks.acquire(["a"], owner: "w4", waiter: "w4"))
        #expect(locks.waitingCount == 3)
        #expect(locks.release("w1") == ["w2"])
        #expect(locks.release("w2") == ["w3", "w4"])
        #expect(locks.release("w3") == [])
        #expect(locks.release("w4") == [])
        #expect(locks.isEmpty)
    }

    @Test func anOwnerPassesItsOwnKeysAndTheWaitersForThem() {
        var locks = Locks()
        // A read-modify-write holds "a" across its read and its write.
        #expect(locks.acquire(["a"], owner: "rmw", waiter: "rmw"))
        #expect(!locks.acquire(["a", "m"], owner: "w2", waiter: "w2"))
        // Its own publish of "a", and of "m" that w2 waits for: granted at once,
        // or neither would ever end.
        #expect(locks.acquire(["a"], owner: "rmw", waiter: "rmw-again"))
        #expect(locks.acquire(["m"], owner: "rmw", waiter: "rmw-meta"))
        #expect(locks.release("rmw") == ["w2"])
        #expect(locks.holders == ["a": "w2", "m": "w2"])
    }

    @Test func nothingToHoldIsGrantedAtOnceAndReleasingAStrangerChangesNothing() {
        var locks = Locks()
        #expect(locks.acquire([], owner: "clear", waiter: "clear"))
        #expect(locks.isEmpty)
        #expect(locks.acquire(["a"], owner: "w1", waiter: "w1"))
        #expect(locks.release("nobody") == [])
        #expect(locks.holders == ["a": "w1"])
        #expect(locks.holds("w1") && !locks.holds("nobody"))
    }
}
