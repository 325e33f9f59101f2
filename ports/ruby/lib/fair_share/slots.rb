# frozen_string_literal: true

require_relative '../fair_share'

class FairShare
  # The thread numbers of one law, lent to requests one at a time: the law paces each thread on
  # its own, so two requests in flight must never share one. A request beyond the law's threads
  # waits in `hold` for a number to come back. One set per law, whichever connections use it,
  # so that two Faraday connections made with the same law still hand out each number once.
  class Slots
    REGISTRY = ObjectSpace::WeakMap.new
    REGISTRY_LOCK = Mutex.new

    def self.of(law)
      REGISTRY_LOCK.synchronize { REGISTRY[law] ||= new(law.threads) }
    end

    def initialize(count)
      @free = Queue.new
      count.times { |slot| @free << slot }
    end

    # Runs the block with a free thread number, and gives it back however the block ends.
    def hold
      slot = @free.pop
      begin
        yield slot
      ensure
        @free << slot
      end
    end
  end
end
