//! The Compute Budget program's instructions, read the way the runtime reads them before
//! execution: a unit limit (default 200,000 per other instruction, at most 1.4 M), a unit
//! price in micro-lamports that adds a priority fee of `ceil(limit × price / 10⁶)` lamports,
//! and refusals for malformed or repeated instructions.

use crucible_solana::tx::{self, Message};

/// Units an instruction may use when the transaction sets no limit.
pub(crate) const DEFAULT_UNITS_PER_INSTRUCTION: u32 = 200_000;
/// The most units a transaction may request.
pub(crate) const MAX_UNITS: u32 = 1_400_000;
const MICRO_LAMPORTS_PER_LAMPORT: u128 = 1_000_000;

/// What a transaction's compute budget instructions ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    pub unit_limit: u32,
    /// Micro-lamports per compute unit (the priority fee's rate).
    pub unit_price: u64,
}

/// A compute budget instruction the runtime refuses; the transaction never executes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BudgetError {
    #[error("Transaction contains an invalid compute budget instruction (instruction {0})")]
    InvalidInstructionData(usize),
    #[error("Transaction contains a duplicate instruction ({0}) that is not allowed")]
    DuplicateInstruction(usize),
}

impl Budget {
    /// The priority fee in lamports, rounded up as the runtime does.
    pub(crate) fn priority_fee(&self) -> u64 {
        let micro = u128::from(self.unit_limit) * u128::from(self.unit_price);
        u64::try_from(micro.div_ceil(MICRO_LAMPORTS_PER_LAMPORT)).unwrap_or(u64::MAX)
    }
}

/// Read the budget from `message`'s Compute Budget instructions.
pub(crate) fn of(message: &Message) -> Result<Budget, BudgetError> {
    let program = tx::compute_budget_program();
    let (mut limit, mut price, mut heap, mut loaded) = (None, None, None, None);
    let mut others: u32 = 0;
    for (index, ix) in message.instructions.iter().enumerate() {
        if message.account_keys[usize::from(ix.program_id_index)] != program {
            others = others.saturating_add(1);
            continue;
        }
        let invalid = BudgetError::InvalidInstructionData(index);
        let u32_arg = || -> Result<u32, BudgetError> {
            let bytes: [u8; 4] = ix
                .data
                .get(1..5)
                .and_then(|b| b.try_into().ok())
                .ok_or(invalid.clone())?;
            if ix.data.len() != 5 {
                return Err(invalid.clone());
            }
            Ok(u32::from_le_bytes(bytes))
        };
        let slot = match ix.data.first() {
            Some(1) => &mut heap,
            Some(2) => &mut limit,
            Some(3) => {
                let bytes: [u8; 8] = ix
                    .data
                    .get(1..9)
                    .and_then(|b| b.try_into().ok())
                    .filter(|_| ix.data.len() == 9)
                    .ok_or(invalid.clone())?;
                if price.replace(u64::from_le_bytes(bytes)).is_some() {
                    return Err(BudgetError::DuplicateInstruction(index));
                }
                continue;
            }
            Some(4) => &mut loaded,
            _ => return Err(invalid),
        };
        if slot.replace(u32_arg()?).is_some() {
            return Err(BudgetError::DuplicateInstruction(index));
        }
    }
    let unit_limit = limit
        .unwrap_or_else(|| others.saturating_mul(DEFAULT_UNITS_PER_INSTRUCTION))
        .min(MAX_UNITS);
    Ok(Budget {
        unit_limit,
        unit_price: price.unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crucible_solana::tx::message::Instruction;
    use crucible_solana::tx::{Pubkey, instructions};

    fn budget_ix(data: Vec<u8>) -> Instruction {
        Instruction {
            program_id: tx::compute_budget_program(),
            accounts: vec![],
            data,
        }
    }

    fn message(ixs: &[Instruction]) -> Message {
        let payer = Pubkey([1; 32]);
        Message::new_legacy(ixs, &payer, [0; 32])
    }

    #[test]
    fn defaults_limits_and_priority_fees_follow_the_runtime() {
        let transfer = instructions::system_transfer(&Pubkey([1; 32]), &Pubkey([2; 32]), 1);
        let plain = of(&message(&[transfer.clone(), transfer.clone()])).expect("budget");
        assert_eq!(plain.unit_limit, 400_000);
        assert_eq!(plain.priority_fee(), 0);

        let mut limit = vec![2];
        limit.extend(300_000u32.to_le_bytes());
        let mut price = vec![3];
        price.extend(1_001u64.to_le_bytes());
        let budget = of(&message(&[budget_ix(limit), budget_ix(price), transfer])).expect("budget");
        assert_eq!(budget.unit_limit, 300_000);
        assert_eq!(budget.unit_price, 1_001);
        // 300,000 × 1,001 µ-lamports = 300.3 lamports, rounded up.
        assert_eq!(budget.priority_fee(), 301);
    }

    #[test]
    fn malformed_and_repeated_instructions_are_refused() {
        assert_eq!(
            of(&message(&[budget_ix(vec![9])])),
            Err(BudgetError::InvalidInstructionData(0))
        );
        assert_eq!(
            of(&message(&[budget_ix(vec![2, 1, 2])])),
            Err(BudgetError::InvalidInstructionData(0))
        );
        let mut price = vec![3];
        price.extend(5u64.to_le_bytes());
        assert_eq!(
            of(&message(&[budget_ix(price.clone()), budget_ix(price)])),
            Err(BudgetError::DuplicateInstruction(1))
        );
    }
}
