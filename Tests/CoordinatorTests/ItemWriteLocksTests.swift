import Testing

@testable import Coordinator

/// Writes serialised per item (``ItemWriteLocks``): who holds a key, who
/// waits, and in which order waiters are granted.
@Suite struct ItemWriteLocksTests {
    typealias Locks = ItemWriteLocks<String>

    @Test func aFreeKeyIsGrantedAndAHeldOneMakesTheNextWriteWait() {
        var locks = Locks()
        let r1 = locks.acquire(["a"], owner: "w1", waiter: "w1")
        #expect(r1)
        let r2 = locks.acquire(["a", "b"], owner: "w2", waiter: "w2")
        #expect(!r2)
        #expect(locks.holders == ["a": "w1"])
        // Another item's write does not wait.
        let r3 = locks.acquire(["c"], owner: "w3", waiter: "w3")
        #expect(r3)
        let r4 = locks.release("w1")
        #expect(r4 == ["w2"])
        #expect(locks.holders == ["a": "w2", "b": "w2", "c": "w3"])
        let r5 = locks.release("w2")
        #expect(r5 == [])
        let r6 = locks.release("w3")
        #expect(r6 == [])
        #expect(locks.isEmpty)
    }

    @Test func waitersOfOneKeyAreGrantedInArrivalOrderAndNoneIsPassed() {
        var locks = Locks()
        let r7 = locks.acquire(["a"], owner: "w1", waiter: "w1")
        #expect(r7)
        let r8 = locks.acquire(["a", "b"], owner: "w2", waiter: "w2")
        #expect(!r8)
        // "b" is free, but w2 came first and wants it: w3 waits behind it.
        let r9 = locks.acquire(["b"], owner: "w3", waiter: "w3")
        #expect(!r9)
        let r10 = locks.acquire(["a"], owner: "w4", waiter: "w4")
        #expect(!r10)
        #expect(locks.waitingCount == 3)
        let r11 = locks.release("w1")
        #expect(r11 == ["w2"])
        let r12 = locks.release("w2")
        #expect(r12 == ["w3", "w4"])
        let r13 = locks.release("w3")
        #expect(r13 == [])
        let r14 = locks.release("w4")
        #expect(r14 == [])
        #expect(locks.isEmpty)
    }

    @Test func anOwnerPassesItsOwnKeysAndTheWaitersForThem() {
        var locks = Locks()
        // A read-modify-write holds "a" across its read and its write.
        let r15 = locks.acquire(["a"], owner: "rmw", waiter: "rmw")
        #expect(r15)
        let r16 = locks.acquire(["a", "m"], owner: "w2", waiter: "w2")
        #expect(!r16)
        // Its own publish of "a", and of "m" that w2 waits for: granted at once,
        // or neither would ever end.
        let r17 = locks.acquire(["a"], owner: "rmw", waiter: "rmw-again")
        #expect(r17)
        let r18 = locks.acquire(["m"], owner: "rmw", waiter: "rmw-meta")
        #expect(r18)
        let r19 = locks.release("rmw")
        #expect(r19 == ["w2"])
        #expect(locks.holders == ["a": "w2", "m": "w2"])
    }

    @Test func nothingToHoldIsGrantedAtOnceAndReleasingAStrangerChangesNothing() {
        var locks = Locks()
        let r20 = locks.acquire([], owner: "clear", waiter: "clear")
        #expect(r20)
        #expect(locks.isEmpty)
        let r21 = locks.acquire(["a"], owner: "w1", waiter: "w1")
        #expect(r21)
        let r22 = locks.release("nobody")
        #expect(r22 == [])
        #expect(locks.holders == ["a": "w1"])
        #expect(locks.holds("w1") && !locks.holds("nobody"))
    }
}
