<?php
// Fixture: a PHP test method is not read (as tests/ is not for C++).

final class LongTest
{
    public function testLong(): void
    {
        // 70 lines: a test case, skipped
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
        $this->assertTrue(true);
    }

    private function helper(): int { return 1; }
}
