"""Agent workspaces moved to their own app (workspaces/): this forgets them here; their
tables stay, and are the new app's (workspaces/migrations/0001_initial.py)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('allocations', '0003_agent_workspaces'),
        ('workspaces', '0001_initial'),
    ]

    operations = [migrations.SeparateDatabaseAndState(state_operations=[
        migrations.RemoveField(
            model_name='workspacecontext',
            name='workspace',
        ),
        migrations.DeleteModel(
            name='AgentWorkspace',
        ),
        migrations.DeleteModel(
            name='WorkspaceContext',
        ),
    ])]
